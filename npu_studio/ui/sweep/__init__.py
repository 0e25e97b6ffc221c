"""The sweep area: a finished sweep's Pareto fronts and sensitivity; a point opens its schedule."""
