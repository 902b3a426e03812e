"""What several studies share: the rules and the mathematics a claim and the robustness study
both read (:mod:`.scaling_family`, :mod:`.horizon_rule`). A study imports
them from here, never another study's module."""
