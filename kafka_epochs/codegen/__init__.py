"""Code generation: spec model -> Python modules (fast backend) and construct definitions."""
