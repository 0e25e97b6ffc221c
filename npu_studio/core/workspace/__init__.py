"""The workspace folder: manifest and schema, publish journal, lock, build jobs, edits, edit state, substitution records.

Every write is a `Transaction` (transaction.py): the lock, a staging folder and one journaled commit. Imports
compile/, ir/ and the shared basics; nothing above.
"""
