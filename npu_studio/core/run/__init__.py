"""Running a build: the runtime runner, signatures and inputs, the numeric gate, kernel timing.

Imports executables/ (the gate checks substitutions), workspace/, compile/,
ir/ and the shared basics.
"""
