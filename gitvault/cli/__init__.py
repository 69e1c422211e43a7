"""The only front door: the console script's entry (``main``: one argv table and one
parser for the hot commands, no click on their path), one error reporter for every path,
and the click commands, one module per group.
"""
