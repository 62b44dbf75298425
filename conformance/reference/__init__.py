"""The bundled reference implementation of the Pet Store interface v1.0.0."""
