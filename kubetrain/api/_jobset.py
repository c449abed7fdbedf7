"""JobSet's spec (``jobset.x-k8s.io/v1alpha2``), the ``template.spec`` of a training runtime,
as OpenAPI definitions in the form of Kubernetes' own (:mod:`_k8sopenapi`), so that one
generator (:mod:`_k8sschemas`) makes the structural schemas of both.

JobSet is not a built-in kind, so no kube-apiserver serves its definitions; these follow the
JobSet CRD that upstream's TrainingRuntime CRD embeds (JobSet v0.12, through Trainer), field
for field: names, types, enums, defaults, required fields, list types and the immutability
rules. Where JobSet holds Kubernetes types (a replicated job's Job template, a volume claim
policy's claims), they refer to Kubernetes' definitions by name. kubetrain runs a JobSet
itself (:mod:`kubetrain.operator.trainjob.workload`), so every field here has a meaning there.

Data only.
"""

from __future__ import annotations

from typing import Any, Final

PREFIX: Final = "io.x-k8s.jobset.v1alpha2."
_JOB_TEMPLATE = "io.k8s.api.batch.v1.JobTemplateSpec"
_CLAIM = "io.k8s.api.core.v1.PersistentVolumeClaim"
_IMMUTABLE: Final = [{"rule": "self == oldSelf", "message": "Value is immutable"}]


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _strings(list_type: str | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if list_type:
        node["x-kubernetes-list-type"] = list_type
    return node


DEFINITIONS: Final[dict[str, Any]] = {
    PREFIX + "JobSetSpec": {
        "description": "JobSetSpec defines the desired state of a JobSet.",
        "type": "object",
        "properties": {
            "replicatedJobs": {
                "description": "replicatedJobs is the group of jobs that will form the set.",
                "type": "array",
                "items": _ref(PREFIX + "ReplicatedJob"),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
            "network": {
                "description": "network defines the networking options for the jobset.",
                **_ref(PREFIX + "Network"),
                "x-kubernetes-validations": _IMMUTABLE,
            },
            "successPolicy": {
                "description": "successPolicy configures when to declare the JobSet as succeeded.",
                **_ref(PREFIX + "SuccessPolicy"),
                "x-kubernetes-validations": _IMMUTABLE,
            },
            "failurePolicy": {
                "description": "failurePolicy configures when to declare the JobSet as failed.",
                **_ref(PREFIX + "FailurePolicy"),
                "x-kubernetes-validations": _IMMUTABLE,
            },
            "startupPolicy": {
                "description": "startupPolicy configures in what order jobs must be started.",
                **_ref(PREFIX + "StartupPolicy"),
                "x-kubernetes-validations": _IMMUTABLE,
            },
            "suspend": {
                "description": "suspend suspends all running child Jobs when set to true.",
                "type": "boolean",
            },
            "coordinator": {
                "description": "coordinator names the pod that acts as the JobSet's coordinator.",
                **_ref(PREFIX + "Coordinator"),
            },
            "managedBy": {
                "description": "managedBy names the controller or entity that manages the JobSet.",
                "type": "string",
            },
            "ttlSecondsAfterFinished": {
                "description": "ttlSecondsAfterFinished limits the lifetime of a finished JobSet.",
                "type": "integer",
                "format": "int32",
                "minimum": 0,
            },
            "volumeClaimPolicies": {
                "description": "volumeClaimPolicies are the claims the JobSet's pods may share.",
                "type": "array",
                "items": _ref(PREFIX + "VolumeClaimPolicy"),
            },
        },
    },
    PREFIX + "ReplicatedJob": {
        "type": "object",
        "required": ["name", "template"],
        "properties": {
            "name": {
                "description": "name is the name of the entry and the suffix of its Jobs' names.",
                "type": "string",
            },
            "groupName": {
                "description": "groupName is the group this ReplicatedJob belongs to.",
                "type": "string",
                "default": "default",
            },
            "template": {
                "description": "template defines the template of the Job that will be created.",
                **_ref(_JOB_TEMPLATE),
            },
            "replicas": {
                "description": "replicas is the number of Jobs created from the template.",
                "type": "integer",
                "format": "int32",
                "default": 1,
            },
            "dependsOn": {
                "description": "dependsOn lists the ReplicatedJobs this one starts after.",
                "type": "array",
                "maxItems": 5,
                "items": _ref(PREFIX + "DependsOn"),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-validations": _IMMUTABLE,
            },
        },
    },
    PREFIX + "DependsOn": {
        "type": "object",
        "required": ["name", "status"],
        "properties": {
            "name": {"description": "name of the previous ReplicatedJob.", "type": "string"},
            "status": {
                "description": "status the previous ReplicatedJob must reach first.",
                "type": "string",
                "enum": ["Ready", "Complete"],
            },
        },
    },
    PREFIX + "Network": {
        "type": "object",
        "properties": {
            "enableDNSHostnames": {
                "description": "enableDNSHostnames lets pods be reached by their hostnames.",
                "type": "boolean",
            },
            "subdomain": {
                "description": "subdomain is the network subdomain of every replicated job.",
                "type": "string",
            },
            "publishNotReadyAddresses": {
                "description": "publishNotReadyAddresses publishes pods' DNS records before "
                "they are ready.",
                "type": "boolean",
            },
        },
    },
    PREFIX + "SuccessPolicy": {
        "type": "object",
        "required": ["operator"],
        "properties": {
            "operator": {
                "description": "operator: whether All or Any of the selected jobs must succeed.",
                "type": "string",
                "enum": ["All", "Any"],
            },
            "targetReplicatedJobs": {
                "description": "targetReplicatedJobs are the replicated jobs it applies to.",
                **_strings("atomic"),
            },
        },
    },
    PREFIX + "FailurePolicy": {
        "type": "object",
        "properties": {
            "maxRestarts": {
                "description": "maxRestarts is the limit on the number of JobSet restarts.",
                "type": "integer",
                "format": "int32",
            },
            "restartStrategy": {
                "description": "restartStrategy is how the JobSet is restarted.",
                "type": "string",
                "default": "Recreate",
                "enum": ["Recreate", "BlockingRecreate", "InPlaceRestart"],
            },
            "rules": {
                "description": "rules are the failure policy rules, the first match applies.",
                "type": "array",
                "items": _ref(PREFIX + "FailurePolicyRule"),
            },
        },
    },
    PREFIX + "FailurePolicyRule": {
        "type": "object",
        "required": ["action", "name"],
        "properties": {
            "name": {"description": "name of the failure policy rule.", "type": "string"},
            "action": {
                "description": "action to take if the rule matches.",
                "type": "string",
                "enum": [
                    "FailJobSet",
                    "RestartJobSet",
                    "RestartJobSetAndIgnoreMaxRestarts",
                    "RestartJob",
                    "RestartJobAndIgnoreMaxRestarts",
                ],
            },
            "onJobFailureReasons": {
                "description": "onJobFailureReasons: the rule matches if one reason matches.",
                **_strings(),
            },
            "onJobFailureMessagePatterns": {
                "description": "onJobFailureMessagePatterns: patterns of job failure messages.",
                **_strings(),
            },
            "targetReplicatedJobs": {
                "description": "targetReplicatedJobs are the replicated jobs it applies to.",
                **_strings("atomic"),
            },
        },
    },
    PREFIX + "StartupPolicy": {
        "type": "object",
        "required": ["startupPolicyOrder"],
        "properties": {
            "startupPolicyOrder": {
                "description": "startupPolicyOrder: in AnyOrder, or InOrder of replicatedJobs.",
                "type": "string",
                "enum": ["AnyOrder", "InOrder"],
            },
        },
    },
    PREFIX + "Coordinator": {
        "type": "object",
        "required": ["replicatedJob"],
        "properties": {
            "replicatedJob": {
                "description": "replicatedJob holds the coordinator pod.",
                "type": "string",
            },
            "jobIndex": {
                "description": "jobIndex is the index of the Job holding the coordinator pod.",
                "type": "integer",
            },
            "podIndex": {
                "description": "podIndex is the completion index of the coordinator pod.",
                "type": "integer",
            },
        },
    },
    PREFIX + "VolumeClaimPolicy": {
        "type": "object",
        "properties": {
            "templates": {
                "description": "templates are the shared claims replicated jobs may refer to.",
                "type": "array",
                "items": _ref(_CLAIM),
            },
            "retentionPolicy": {
                "description": "retentionPolicy is what becomes of the claims.",
                **_ref(PREFIX + "RetentionPolicy"),
            },
        },
    },
    PREFIX + "RetentionPolicy": {
        "type": "object",
        "properties": {
            "whenDeleted": {
                "description": "whenDeleted: what happens to the claims when the JobSet goes.",
                "type": "string",
                "default": "Delete",
                "enum": ["Delete", "Retain"],
            },
        },
    },
}
