"""Built-in plugins: registered through the same hooks as third-party plugins."""
