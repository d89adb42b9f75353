"""Management operations, access and auth: what people and agents may do beside sending (admin's verbs, reach and
permissions, queries, sessions and keys, personas and rulebooks, directives' text, name checks)."""
