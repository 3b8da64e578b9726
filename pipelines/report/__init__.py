"""What haul shows people: the counts table (`counts`), the run report (`run`: report.json and
report.html, its sections in `parts`, its page in `html`) and the one chart kit every page
draws with (`charts`, also the export's flow.html).
"""
