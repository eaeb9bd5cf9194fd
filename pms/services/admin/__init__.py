"""The admin surface: page definitions, admin lists, submit aliases, policies."""
