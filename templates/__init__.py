"""Jinja2 templates of the generated CUDA (shipped inside the wheel as an5dpy.templates)."""
