"""The reference's ``ppa`` module (power, performance, area): none of its names exist here yet.
A run's ``ppa`` block is in ``summarise``'s dict when the run has one."""
