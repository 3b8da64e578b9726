"""Clients for the services haul moves data between, over one shared async HTTP core.

``http.HttpCore`` does auth, org headers, rate budgets and safe retries; ``errors`` holds
the error tree (what the caller should do); ``pagination`` the paginators; ``tracker``
the issue tracker's client. Nothing here knows about the staging store or the pipelines.
"""
