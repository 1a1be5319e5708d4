# tests/local.mk: TAP test programs (owned by the tests work; the lead adds nothing here).
