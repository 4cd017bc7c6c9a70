"""A Java runtime assembled from Debian's packages (stack/jre.py): its configuration links replaced by the
package's files, its programs and libraries pointed at the suite's C library, and where it is looked for."""

import os
import shutil
import subprocess

import pytest

from sbclab.errors import SbclabError
from sbclab.stack import java, jre


def test_debians_configuration_links_become_the_packages_files_and_links_out_of_it_are_dropped(tmp_path):
    runtime = jre.RUNTIMES[8]
    home = tmp_path / "jre"
    (home / "lib" / "security").mkdir(parents=True)
    config = tmp_path / "etc" / "java-8-openjdk"
    (config / "security").mkdir(parents=True)
    (config / "security" / "java.security").write_text("securerandom.source=file:/dev/urandom\n")
    os.symlink("/etc/java-8-openjdk/security/java.security", home / "lib" / "security" / "java.security")
    os.symlink("/etc/ssl/certs/java/cacerts", home / "lib" / "security" / "cacerts")
    os.symlink("amd64", home / "lib" / "arch")  # a link inside the runtime stays
    jre._resolve_config_links(home, config, runtime)
    security = home / "lib" / "security" / "java.security"
    assert not security.is_symlink() and "urandom" in security.read_text()
    assert not os.path.lexists(home / "lib" / "security" / "cacerts")
    assert os.readlink(home / "lib" / "arch") == "amd64"


@pytest.mark.skipif(shutil.which("patchelf") is None, reason="patchelf is installed by make setup")
def test_programs_load_through_the_suites_loader_and_libraries_look_in_its_folder_first(tmp_path):
    home = tmp_path / "jre"
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "sysroot").mkdir()
    shutil.copy("/bin/true", home / "bin" / "java")
    library = next(p for p in ("/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
                               "/lib/aarch64-linux-gnu/libz.so.1") if os.path.exists(p))
    shutil.copy(library, home / "lib" / "libz.so.1")
    (home / "lib" / "README").write_text("not a program")
    final = tmp_path / "final" / "sysroot"
    jre._point_at_sysroot(home, final, "ld-linux-x86-64.so.2")

    def read(what, path):
        return subprocess.run(["patchelf", what, str(path)], capture_output=True, text=True, check=True).stdout.strip()
    assert read("--print-interpreter", home / "bin" / "java") == str(final / "ld-linux-x86-64.so.2")
    assert read("--print-rpath", home / "bin" / "java").startswith(str(final))
    assert read("--print-rpath", home / "lib" / "libz.so.1").split(":")[0] == str(final)


def test_an_assembled_runtime_is_found_after_the_installed_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path))
    monkeypatch.delenv("SBCLAB_JAVA_HOME", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assembled = tmp_path / "cache" / "jre-8-amd64"
    (assembled / "bin").mkdir(parents=True)
    assert jre.assembled_homes() == []  # no manifest yet: not whole
    (assembled / "MANIFEST.json").write_text("{}")
    assert jre.assembled_homes() == [assembled.resolve()]
    (assembled / "bin" / "java").write_text('#!/bin/sh\necho \'openjdk version "1.8.0_504"\' >&2\n')
    (assembled / "bin" / "java").chmod(0o755)
    java.java_home.cache_clear()
    try:
        assert java.java_home((8,)) == assembled.resolve()
    finally:
        java.java_home.cache_clear()


def test_a_java_sbclab_cannot_assemble_is_one_sentence():
    assert jre.can_assemble((8,)) and not jre.can_assemble((11, 17))
    with pytest.raises(SbclabError, match="cannot assemble a Java 11 runtime"):
        jre.assemble(11)
