"""The cluster definitions in cluster/ are what their launchers accept, and the skipview commands inside them parse.

- cluster/bookcorpus-aws.yaml: Ray's own preparation and validation of a cluster file, the steps `ray up` takes
  before it calls the cloud (`prepare_config` fills the provider's defaults, `validate_config` checks the result
  against the JSON schema Ray ships, ray/autoscaler/ray-schema.json).
- cluster/bookcorpus-rayjob.yaml: KubeRay's RayJob schema (cluster/schemas/, an extract of the CRD with its release
  named), under Kubernetes' strict field validation: an unknown field is an error.
- every `skipview ...` command in them: skipview's own command line parses it (options, types, required
  arguments) and the training settings it builds validate, without running anything.
"""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path

import jsonschema
import pytest
import typer
import typer.main
import yaml
from ray.autoscaler._private.providers import _NODE_PROVIDERS
from ray.autoscaler._private.util import prepare_config, validate_config
from ray.runtime_env import RuntimeEnv

from skipview.platform.cli import app
from skipview.platform.training.config import check_precision, load_settings
from skipview.platform.training.driver import objective_config

CLUSTER = Path(__file__).resolve().parent.parent / "cluster"
RAY_CLUSTER_FILE = CLUSTER / "bookcorpus-aws.yaml"
RAYJOB_FILE = CLUSTER / "bookcorpus-rayjob.yaml"
RAYJOB_SCHEMA = CLUSTER / "schemas" / "rayjob-v1.7.0.json"
SHARED_MOUNT = "/mnt/skipview/"


def ray_cluster_file() -> dict:
    return yaml.safe_load(RAY_CLUSTER_FILE.read_text())


def rayjob() -> dict:
    return yaml.safe_load(RAYJOB_FILE.read_text())


def strict(schema):
    """Kubernetes' strict field validation (`kubectl apply`'s default): in a structural schema an object's fields
    are its `properties` unless it says `x-kubernetes-preserve-unknown-fields` or gives `additionalProperties`."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: strict(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema \
            and not schema.get("x-kubernetes-preserve-unknown-fields"):
        schema["additionalProperties"] = False
    return schema


def rayjob_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(strict(json.loads(RAYJOB_SCHEMA.read_text())))


def parse_skipview(command: str, root: Path):
    """The click context `skipview` builds for ``command`` (its callback not run), paths on the shared mount
    moved under ``root`` and made there (a name with a suffix as a file, else as a folder) so that the options
    that must name an existing path parse."""
    words = shlex.split(command)
    assert words[0] == "skipview", command
    args = []
    for word in words[1:]:
        if word.startswith(SHARED_MOUNT):
            local = root / word[len(SHARED_MOUNT):]
            if local.suffix:
                local.parent.mkdir(parents=True, exist_ok=True)
                local.touch()
            else:
                local.mkdir(parents=True, exist_ok=True)
            word = str(local)
        args.append(word)
    command_object, path = typer.main.get_command(app), ["skipview"]
    while hasattr(command_object, "commands") and args and args[0] in command_object.commands:
        path.append(args[0])
        command_object = command_object.commands[args.pop(0)]
    return command_object.make_context(" ".join(path), args)


def train_settings(context):
    """The settings `skipview train` builds from its options, checked as it checks them before Ray starts (all
    but the data, which is not here): the typed settings, the objective's own, the precision on the device."""
    params = context.params
    base = {"objective": params["objective"], "corpus": str(params["corpus"]),
            "wordvecs": str(params["wordvecs"]) if params["wordvecs"] else None,
            "senteval_dir": str(params["senteval_dir"]) if params["senteval_dir"] else None}
    settings = load_settings(params["config"], base, params["set_"])
    check_precision(settings.precision, params["gpus_per_worker"] > 0)
    return settings, objective_config(settings)


def test_ray_cluster_file_passes_rays_own_validation():
    config = ray_cluster_file()
    assert config["provider"]["type"] in _NODE_PROVIDERS
    validate_config(prepare_config(copy.deepcopy(config)))

    misspelt = copy.deepcopy(config)
    misspelt["setup_comands"] = misspelt.pop("setup_commands")
    with pytest.raises(jsonschema.ValidationError, match="setup_comands"):
        validate_config(prepare_config(misspelt))


def test_rayjob_manifest_matches_kuberays_schema():
    validator = rayjob_validator()
    manifest = rayjob()
    assert (manifest["apiVersion"], manifest["kind"]) == ("ray.io/v1", "RayJob")
    assert list(validator.iter_errors(manifest)) == []
    runtime_env = RuntimeEnv(**yaml.safe_load(manifest["spec"]["runtimeEnvYAML"]))    # Ray's own check of it
    assert runtime_env["env_vars"]["MLFLOW_TRACKING_URI"].startswith("http://")

    misspelt = rayjob()
    misspelt["spec"]["entryPoint"] = misspelt["spec"].pop("entrypoint")
    assert any("entryPoint" in error.message for error in validator.iter_errors(misspelt))
    wrong_type = rayjob()
    wrong_type["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = "1"
    assert not validator.is_valid(wrong_type)
    unknown_in_pod = rayjob()
    unknown_in_pod["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["imagePolicy"] = "x"
    assert not validator.is_valid(unknown_in_pod)


def test_the_commands_inside_parse_and_their_settings_validate(tmp_path):
    skipview = ray_cluster_file()["metadata"]["skipview"]
    for command in skipview["prepare"]:
        parse_skipview(command, tmp_path)
    for command in (skipview["train"], rayjob()["spec"]["entrypoint"]):
        settings, objective = train_settings(parse_skipview(command, tmp_path))
        assert settings.objective == "disc" and objective["hidden_size"] == 1024
        assert (settings.batch_size, settings.epochs, settings.max_steps) == (512, 1, None)

    with pytest.raises(ValueError, match="unknown key 'hidden_sise'"):
        train_settings(parse_skipview(skipview["train"].replace("hidden_size", "hidden_sise"), tmp_path))
    with pytest.raises(typer.TyperException, match="No such option: --gpus-per-workers"):
        parse_skipview(skipview["train"].replace("--gpus-per-worker", "--gpus-per-workers"), tmp_path)


def test_both_files_run_one_command_that_fits_their_gpus(tmp_path):
    train = shlex.split(ray_cluster_file()["metadata"]["skipview"]["train"])
    at = train.index("--address")
    assert train[:at] + train[at + 2:] == shlex.split(rayjob()["spec"]["entrypoint"])

    params = parse_skipview(ray_cluster_file()["metadata"]["skipview"]["train"], tmp_path).params
    gpus_asked = params["workers"] * params["gpus_per_worker"]
    node_types = ray_cluster_file()["available_node_types"].values()
    assert gpus_asked <= sum(t.get("max_workers", 0) * t["resources"].get("GPU", 0) for t in node_types)
    workers = rayjob()["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    gpus_per_pod = [int(group["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
                    for group in workers]
    assert gpus_asked <= sum(g["replicas"] * n for g, n in zip(workers, gpus_per_pod))
