"""skipview.models: pure-PyTorch sentence encoders and their training objectives.

No Ray, MLflow or DVC in here (ARCHITECTURE.md section 1): everything is testable as plain PyTorch.
"""
