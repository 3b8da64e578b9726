"""How issues are found and listings page: which issues a search body or query selects
(:mod:`query`), scroll sessions (:mod:`scroll`), and the page-number and relative-cursor
reply headers (:mod:`paging`)."""
