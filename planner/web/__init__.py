"""The browser pages: overview, policies and their shares editor, traces, studies list and launch."""
