"""The tables of a report, one function per section, in the order a reader meets them: first the headlines
(the few rows a reader wants first: a section's largest size, its defaults), then every section's full tables for
the details. A new experiment's table is one more function in one of these modules (or a new one) and its name
in the lists below. Every caption says what its figures are, in which unit, and against what they are measured;
the plan's constants are read, never retyped."""

from harness.output.sections import answers, memory, services, serving, streams, timed
from harness.output.sections.common import Render

HEADLINES: list[Render] = [
    timed.scaling_headline,
    timed.realtext_headline,
    streams.streaming_headline,
    memory.needles_headline,
    memory.dialogue_headline,
    memory.beir,
]
SECTIONS: list[Render] = [
    timed.scaling,
    timed.growing,
    timed.sweep,
    timed.realtext,
    timed.realtext_sweep,
    streams.streaming,
    memory.needles,
    memory.grouping,
    memory.judges,
    memory.dialogue,
    answers.answers,
    memory.field_readings,
    memory.updates,
    serving.serving,
    services.concurrency,
    services.filtered,
    services.tenants,
]
