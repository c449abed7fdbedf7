"""The TrainJob runtime plugins, one module each; the framework lists them in ``PLUGINS``.

Each plugin implements only the phase protocols of :mod:`kubetrain.operator.trainjob.phases`
it needs, returns at once when the runtime does not select it, and is pure: it edits the
:class:`~kubetrain.operator.trainjob.runtime_info.RuntimeInfo` it is given or returns objects,
and never does I/O, reads the clock or logs. The env contracts themselves live in
:mod:`kubetrain.frameworks.trainjob`; the plugins put them where they belong.
"""
