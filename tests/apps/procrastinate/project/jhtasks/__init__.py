"""The test app's tasks and their one table."""
