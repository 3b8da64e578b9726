"""Clients for the services haul moves data between, over one shared async HTTP core.

``http.HttpCore`` does auth, org headers, rate budgets (``budget``) and safe retries
(``retrying``), over aiohttp's pool (``transport``); ``errors`` holds the error tree (what the
caller should do); ``pagination`` the paginators; ``tracker``, ``wiki`` and ``forms`` are the
services' clients. Nothing here knows about the staging store or the pipelines.
"""
