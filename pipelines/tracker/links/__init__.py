"""The links layer: links between issues, loaded once both ends exist."""
