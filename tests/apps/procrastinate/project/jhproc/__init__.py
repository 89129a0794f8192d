"""Django project of the procrastinate test app (settings only)."""
