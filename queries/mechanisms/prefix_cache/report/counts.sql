-- counts: the triage's counts the documents state beside `affected` (triage_summary, written by this
-- mechanism's triage summary): the possibly affected responses (held in `affected` beside the affected ones)
-- and the requests that cannot be decided.
-- Params: none
SELECT s.possibly_affected, s.cannot_decide
FROM triage_summary AS s
