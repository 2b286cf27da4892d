"""Output: the typed results of a run, the written report and plots, and progress a user can see."""
