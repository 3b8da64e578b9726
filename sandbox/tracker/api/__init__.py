"""What every route of the tracker shares: the caller and its organisation (:mod:`context`),
the error envelope (:mod:`errors`), field validation that answers one 422 (:mod:`checks`), the
optimistic version lock (:mod:`locking`), and the references every JSON shape is made of
(:mod:`render_refs`)."""
