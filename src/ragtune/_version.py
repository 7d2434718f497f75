"""The package version: the ground floor, so that any module may read it without importing the package facade."""

__version__ = "0.1.0"
