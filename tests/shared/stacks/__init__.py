"""Small Pet Store apps on the real rate-limit libraries vendors use (Flask-Limiter, slowapi)."""
