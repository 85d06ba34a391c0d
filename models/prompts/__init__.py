"""Prompts, one module per task: response model, a pure ``context -> messages`` function,
and a VERSION recorded with every decision so a changed prompt is traceable."""
