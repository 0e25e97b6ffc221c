"""The Executables dock: the list of the build's executables and the editor that substitutes one."""
