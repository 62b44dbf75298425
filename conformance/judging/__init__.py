"""The judging wing: the checks and the requirement each names, the checks made on every
response, the reading of a key's rate-limit windows, one cause one requirement, hints, a front's
refusals and the verdict."""
