"""Cut the RayJob schema that tests/test_cluster_files.py checks cluster/bookcorpus-rayjob.yaml against
out of KubeRay's CustomResourceDefinition.

    python cluster/schemas/extract_rayjob_schema.py ray.io_rayjobs.yaml v1.7.0 > cluster/schemas/rayjob-v1.7.0.json

The input is `ray-operator/config/crd/bases/ray.io_rayjobs.yaml` of the ray-project/kuberay release named by the
second argument. The CRD (25,000 lines) embeds Kubernetes' PodTemplateSpec three times; the extract keeps the
RayJob schema (`ray.io/v1`, its `openAPIV3Schema`) whole but for the pod templates, which it keeps once (a `$ref`)
with only the pod, container and volume fields in `POD_FIELDS`, each with its upstream definition, and `status`,
which the operator writes. Checked with Kubernetes' strict field validation (an unknown field is an error), a field
left out of the extract fails the check: the extract can only be stricter than the CRD, never looser. To use another
pod field, add it to `POD_FIELDS` and extract again.
"""

from __future__ import annotations

import copy
import json
import sys

import yaml

POD_FIELDS = {
    "spec": ["containers", "nodeSelector", "serviceAccountName", "terminationGracePeriodSeconds", "tolerations",
             "volumes"],
    "containers": ["name", "image", "command", "args", "env", "lifecycle", "resources", "ports", "volumeMounts"],
    "volumes": ["name", "persistentVolumeClaim", "emptyDir"],
}
TEMPLATE = {"$ref": "#/$defs/PodTemplateSpec"}


def keep(schema: dict, fields: list[str]) -> dict:
    return {**schema, "properties": {name: schema["properties"][name] for name in fields}}


def pod_template(template: dict) -> dict:
    spec = keep(template["properties"]["spec"], POD_FIELDS["spec"])
    for field in ("containers", "volumes"):
        items = spec["properties"][field]["items"]
        spec["properties"][field] = {**spec["properties"][field], "items": keep(items, POD_FIELDS[field])}
    return {**template, "properties": {**template["properties"], "spec": spec}}


def extract(crd: dict, release: str) -> dict:
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
    del schema["properties"]["status"]
    spec = schema["properties"]["spec"]["properties"]
    cluster = spec["rayClusterSpec"]["properties"]
    templates = [cluster["headGroupSpec"]["properties"], cluster["workerGroupSpecs"]["items"]["properties"], spec]
    keys = ["template", "template", "submitterPodTemplate"]
    if any(where[key] != templates[0]["template"] for where, key in zip(templates, keys)):
        raise SystemExit("error: the CRD's three pod templates differ; extract each on its own")
    definition = pod_template(templates[0]["template"])
    for where, key in zip(templates, keys):
        where[key] = TEMPLATE
    return {"$comment": f"RayJob ray.io/v1 openAPIV3Schema from ray-project/kuberay {release}, "
                        "ray-operator/config/crd/bases/ray.io_rayjobs.yaml, pod templates cut to "
                        f"{json.dumps(POD_FIELDS)} by cluster/schemas/extract_rayjob_schema.py",
            "$defs": {"PodTemplateSpec": definition}, **schema}


if __name__ == "__main__":
    crd_path, release = sys.argv[1], sys.argv[2]
    with open(crd_path) as f:
        print(json.dumps(extract(yaml.safe_load(f), release), indent=1, sort_keys=True))
