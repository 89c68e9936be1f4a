"""What the LLM layer keeps on disk: the shared response cache (``cache``), a run's record of
every call and decision (``recorder``), and the SQLite wrapper both stand on (``sqlitedb``)."""
