"""The workspace folder: manifest and schema, publish journal, lock, build jobs, edits, edit state, substitution records.

Every write goes through a staging folder and one journaled commit. Imports
compile/, ir/ and the shared basics; nothing above.
"""
