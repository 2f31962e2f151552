"""Stage 1, the base: errors, clocks, the current step, the project's settings and the
"module:attr" loader. Imports nothing else of faultdeck."""
