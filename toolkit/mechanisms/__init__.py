"""The exposure mechanisms kvir ships, one package each (the registry and the interface: kvir.spec.mechanism).

A package here is one mechanism, whole: its __init__.py declares it (MECHANISM), and one module per stage
holds that stage's part as PART (spec, triage, audit, replay, report, probe, serve; each stage's hookspec
says what the part must have). Its SQL lies in queries/mechanisms/<folder>/ (found before the shared
queries/<name>.sql of the same name), its templates in templates/mechanisms/<folder>/. README "Adding a
mechanism" walks through a new one.
"""
