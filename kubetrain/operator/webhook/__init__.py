"""The operator's admission webhooks: kube-apiserver asks them to judge (and, for the
``trainer.kubeflow.org`` kinds, default) every kubetrain object on create and update, with the
same code the local API server and ``kubetrain validate`` use, so a real cluster refuses what
they refuse, in the same words.

    settings        where it serves and how its certificate is managed
    configurations  the two webhook configurations: a webhook, path and rule per kind
    admission       one AdmissionReview answered through ``kubetrain.api.review``
    jsonpatch       the mutating answer: a JSON patch to the defaulted object
    certs           the CA and serving certificate, kept and renewed in a Secret
    cabundle        in the cluster: the CA written into the deployed configurations
    registration    out of the cluster (--webhook-url): the configurations registered
    server          the HTTPS site and its lifecycle, run by the manager

Must not: import the controllers (jobs/, trainjob/), or judge objects itself.
"""
