"""Sleep: a pass that regroups the cells and judges changed groups for conflicts; the regrouping policy."""
