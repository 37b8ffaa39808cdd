"""What runs cost: tokens and money per model turn, run, tool and model, and what dropped
requests wasted, computed from records alone (``lens``); the same read from a store a page of runs
at a time, and many runs' spend summed by model or by day (``reading``)."""
