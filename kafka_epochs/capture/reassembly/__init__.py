"""TCP streams: each direction put in order (:mod:`.halfstream`), and connections opened and
closed (:mod:`.connections`)."""
