"""A Kubernetes-compatible API server on SQLite: the part of the REST API kubetrain, kubectl
and the official clients use, with kube-apiserver's semantics.

Modules, lowest first (the pure ones do no I/O and are tested with tables):

- ``selectors``  label and field selectors: parsing (kube's grammar and messages) and matching
- ``apply``      server-side apply: managedFields, field ownership, conflicts, force
- ``fieldpaths`` field paths in kube's FieldsV1 and dotted forms
- ``fieldsets``  which lists are keyed, the fields an object sets, what a write changed
- ``fielderrors`` 422 causes in the words of kube's ``field.Error``
- ``schema``     a structural schema applied to an object: pruning, defaulting
- ``schemavalidation`` an object validated against a structural schema, in kube's words
- ``crdvalidation`` the checks on a CRD before it is served, and its versions' questions
- ``tablecolumns`` what every Table has: column definitions, NAME and AGE, kube's ages
- ``jsonpath``   the JSONPath subset of CRD printer columns
- ``printers``   the built-in printers of ``kubectl get`` (kube's printers.go)
- ``tables``     ``meta.k8s.io/v1`` Table responses: built-in, CRD printer columns, default
- ``openapischemas`` the component schemas of the OpenAPI documents, and their names
- ``openapi``    the OpenAPI v2 and v3 documents kubectl reads: paths, operations, documents
- ``store``      SQLite (WAL) or in-memory storage: one resourceVersion sequence, the event log
- ``watch``      watch fan-out and resume from a resourceVersion; 410 Gone after compaction
- ``resources``  the built-in resource table (group, version, kind, plural, scope, verbs)
- ``queryoptions`` what a request asks for besides its body (write, list, watch, delete options)
- ``bodies``     request bodies: objects decoded for a resource, patch documents, depth limits
- ``pagination`` pages of a list: ``limit`` and ``continue`` tokens
- ``results``    what the registry answers: objects, and lists spliced from stored encodings
- ``admission``  NamespaceLifecycle, kubetrain's own admission, the quota create lock
- ``prepare``    what every create and update does before the store (kube's BeforeCreate/Update)
- ``registry``   the generic store: create/get/list/update/patch/delete/watch over ``store``,
                 one compare-and-swap write path
- ``strategies`` the per-resource hooks (prepare, validate), their base, and the status and
                 other subresource strategies
- ``namespaces``, ``pods``, ``services``, ``claims``, ``quotas``, ``crds``: one kind's rules each
- ``serviceaccounts`` the ServiceAccount admission's token volume and the TokenRequest
- ``rbac``       Roles, ClusterRoles and their bindings, stored and validated, not enforced
- ``builtin_schemas`` the shapes of built-in kinds, for unknown-field checks
- ``protobuf``   the few protobuf bodies kubectl sends for built-in kinds
- ``bootstrap``  what exists on first start: namespaces, CRDs (kubetrain's, Volcano's,
                 scheduler-plugins')
- ``errors``     ``Status`` bodies shaped as kube-apiserver's
- ``discovery``  ``/api``, ``/apis`` and aggregated discovery
- ``tls``        the CA, serving certificate, bearer token and kubeconfig (files 0600)
- ``nodeproxy``  ``pods/log`` and ``pods/exec`` forwarded to the pod's node, and the contract
                 a node agent serves them by
- ``metrics``    ``metrics.k8s.io`` (``kubectl top``) from the nodes' ``/stats/summary``
- ``server``     the aiohttp application: routing, auth, TLS, Status errors
"""
