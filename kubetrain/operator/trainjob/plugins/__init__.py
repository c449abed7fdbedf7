"""The TrainJob runtime plugins, one module each; the framework lists them in ``PLUGINS``.

Each plugin implements only the phase protocols of :mod:`kubetrain.operator.trainjob.phases`
it needs, returns at once when the runtime does not select it, and is pure: it edits the
:class:`~kubetrain.operator.trainjob.runtime_info.RuntimeInfo` it is given or returns objects,
and never does I/O, reads the clock or logs.

A plugin is two modules, each with one job: its pure half in
:mod:`kubetrain.frameworks.trainjob` (``<name>.py``: the admission checks, upstream's
``Validate``, and the env contract), and here the phases that put that contract on the
JobSet and build the plugin's objects (``EnforceMLPolicy``, ``PreBuild``, ``Build``). A plugin
module here reads only its own contract module; nothing else in the tree knows a plugin's
variables, reserved names or messages. ``jobset``, ``coscheduling``, ``trainer`` and the
status plugins have no pure half: they decide nothing about a TrainJob that admission checks.
"""
