"""Where a tool call sends data: network targets, recipients, sensitive sources."""
