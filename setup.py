"""Package list for the wheel; everything else is in pyproject.toml.

`models/` installs as `skipview.models` and `platform/` as `skipview.platform`. setuptools cannot express
"every sub-package of a remapped folder" in pyproject.toml, and a hand-written list drops any folder that is
forgotten from the wheel while an editable install still imports it. So the list is derived from the tree.
"""

from setuptools import find_namespace_packages, setup

SOURCE_FOLDERS = {"skipview.models": "models", "skipview.platform": "platform"}


def packages_under(name: str, folder: str) -> list[str]:
    found = find_namespace_packages(folder, exclude=["__pycache__", "*.__pycache__"])
    return [name] + [f"{name}.{sub}" for sub in found]


setup(
    packages=[p for name, folder in SOURCE_FOLDERS.items() for p in packages_under(name, folder)],
    package_dir=SOURCE_FOLDERS,
    package_data={name: ["**/*.yaml", "**/*.json"] for name in SOURCE_FOLDERS},
)
