"""A flow program run dispatch by dispatch: the host side interpreted in numpy
(`host`, `scalar_ops`), each dispatch run by IREE from a module with one
function per dispatch (`iree_dispatches`, `dispatch_server`). No Qt.
"""
