"""What every route of the tracker shares: the caller and its organisation (:mod:`context`),
the error envelope (:mod:`errors`), field validation that answers one 422 (:mod:`checks`), the
optimistic version lock (:mod:`locking`), the references every JSON shape is made of
(:mod:`render_refs`), and the list / get / create / edit / delete routes of a collection of
an organisation's records (:mod:`collection`)."""
