package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.pod.PodJson;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.examples.lab.LabWorkspace;
import io.vgpu.k8s.pod.PodJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A container of the lab's runtime is a real process: its mounts land where the device plugin said,
 * read-only ones stay read-only, a host path it shadows is still mounted from the host, it runs as
 * nobody without capabilities and cannot unmount its limits file, and it gets exactly its environment.
 * Needs root (mount namespaces); skipped otherwise.
 */
class ContainerRuntimeTest {
  private LabWorkspace workspace;
  private CgroupPlacement cgroups;

  @BeforeEach
  void start() throws Exception {
    assumeThat(Files.readString(Path.of("/proc/self/status"))).as("the lab's container runtime needs root").containsPattern("Uid:\\s+0\\s");
    workspace = LabWorkspace.temporary();
    cgroups = CgroupPlacement.probe(workspace.root().getFileName().toString());
  }

  @AfterEach
  void stop() {
    if (workspace != null) {
      cgroups.removeAll();
      workspace.close();
    }
  }

  private RunningContainer run(List<ContainerSpec.Mount> mounts, Map<String, String> env, String script) throws Exception {
    ContainerRuntime runtime = new ContainerRuntime(workspace, cgroups, ContainerRuntime.defaultLibraryDirectory());
    ContainerSpec spec = new ContainerSpec("ns", "pod", "uid-1", "BestEffort", "c", List.of("/bin/sh", "-c", script), env, mounts, Optional.empty());
    RunningContainer container = runtime.start(spec);
    assertThat(container.waitFor(Duration.ofSeconds(20))).isTrue();
    return container;
  }

  @Test
  void mountsLandWhereTheDevicePluginSaidReadOnlyStaysReadOnlyAndNothingCanBeUnmounted() throws Exception {
    Path hook = workspace.directory("hook/vgpu");
    Files.writeString(hook.resolve("libvgpu.so"), "the library");
    Path containerDir = workspace.directory("hook/vgpu/containers/uid-1_c");
    // the node agent makes it writable for any user of the container
    Files.setPosixFilePermissions(containerDir, PosixFilePermissions.fromString("rwxrwxrwx"));
    Path limits = workspace.write("limits/uid-1_c", "CUDA_DEVICE_MEMORY_LIMIT_0=1024m\nEND\n");
    // HAMi's layout: the per-container directory is mounted over <hook>/vgpu, where the library's host
    // path also lies; runtimes resolve sources on the host, so the library must still be the host's.
    List<ContainerSpec.Mount> mounts = List.of(
        new ContainerSpec.Mount(hook.resolve("libvgpu.so").toString(), hook.resolve("libvgpu.so").toString(), true),
        new ContainerSpec.Mount(hook.toString(), containerDir.toString(), false),
        new ContainerSpec.Mount("/etc/vgpu/limits", limits.toString(), true));
    Map<String, String> env = new LinkedHashMap<>();
    env.put("PATH", "/usr/bin:/bin");
    env.put("ONLY", "this");
    String script =
        "cat " + hook + "/libvgpu.so; echo; cat /etc/vgpu/limits; id -u; env | sort | tr '\\n' ' '; echo;"
            + " echo x > /etc/vgpu/limits 2>/dev/null && echo WROTE; umount /etc/vgpu/limits 2>/dev/null && echo UNMOUNTED;"
            + " echo region > " + hook + "/vgpu.cache && echo REGION; grep CapEff /proc/self/status";
    RunningContainer c = run(mounts, env, script);
    String out = Files.readString(c.stdoutFile());
    assertThat(out).startsWith("the library\nCUDA_DEVICE_MEMORY_LIMIT_0=1024m\nEND\n65534\n");
    assertThat(out).contains("ONLY=this PATH=/usr/bin:/bin PWD=/ \n");
    assertThat(out).doesNotContain("WROTE").doesNotContain("UNMOUNTED").contains("REGION").contains("CapEff:\t0000000000000000");
    // the write went to the per-container directory on the host, the host's /etc is untouched
    assertThat(Files.readString(containerDir.resolve("vgpu.cache"))).isEqualTo("region\n");
    assertThat(Path.of("/etc/vgpu/limits")).doesNotExist();
    assertThat(c.exitCode()).isZero();
  }

  @Test
  void aKaiFractionPodsVolumesAndTheServiceAccountTokenReachTheContainerAndNothingLandsOnTheMachine() throws Exception {
    // the node as vgpu's node agent leaves it under KAI: the grant directory root-owned 0755 with the
    // container's limits, the region directories' parent
    Path hook = workspace.directory("nodes/n1/hook/vgpu");
    Files.writeString(hook.resolve("libvgpu.so"), "the library");
    Path grants = workspace.directory("nodes/n1/hook/vgpu/kai");
    Files.setPosixFilePermissions(grants, PosixFilePermissions.fromString("rwxr-xr-x"));
    Path grant = workspace.directory("nodes/n1/hook/vgpu/kai/uid-9_app");
    Files.writeString(grant.resolve("limits"), "VGPU_DEVICES=GPU-0\nEND\n");
    Path regions = workspace.directory("nodes/n1/hook/vgpu/containers");
    // 1777, as the chart's hook directories are made: the sticky bit, which Java's file attributes cannot set
    assertThat(new ProcessBuilder("chmod", "1777", regions.toString()).start().waitFor()).isZero();
    NodePaths paths = new NodePaths(workspace.directory("nodes/n1/root"), Map.of("/usr/local/vgpu", hook));
    ClusterAccess access = new ClusterAccess("127.0.0.1", 6443, "", (ns, sa, node) -> "token-of-" + sa + "@" + node);
    PodVolumes volumes = new PodVolumes(workspace.directory("nodes/n1/pods/uid-9"), paths, (ns, name) -> Optional.empty(), access,
        new ContainerEnvironment.PodPlace("n1", "127.0.0.1", "127.0.0.1"));
    Pod pod = PodJson.mapper().readValue("""
        {"metadata": {"name": "shared", "namespace": "team", "uid": "uid-9"},
         "spec": {"serviceAccountName": "runner", "containers": [{"name": "app", "volumeMounts": [
             {"name": "lib", "mountPath": "/usr/local/vgpu/libvgpu.so", "readOnly": true},
             {"name": "grant", "mountPath": "/etc/vgpu", "readOnly": true, "subPathExpr": "$(VGPU_POD_UID)_app"},
             {"name": "region", "mountPath": "/usr/local/vgpu", "subPathExpr": "$(VGPU_POD_UID)_app"},
             {"name": "scratch", "mountPath": "/mnt/vgpu-lab-test/work"}]}],
          "volumes": [{"name": "lib", "hostPath": {"path": "/usr/local/vgpu/libvgpu.so", "type": "File"}},
                      {"name": "grant", "hostPath": {"path": "/usr/local/vgpu/kai", "type": "Directory"}},
                      {"name": "region", "hostPath": {"path": "/usr/local/vgpu/containers", "type": "Directory"}},
                      {"name": "scratch", "emptyDir": {}}]}}
        """, Pod.class);
    List<ContainerSpec.Mount> mounts = volumes.mounts(pod, pod.getSpec().getContainers().get(0), Map.of("VGPU_POD_UID", "uid-9"), volumes.setUp(pod));
    String sa = PodVolumes.SERVICE_ACCOUNT_MOUNT;
    String script = "cat " + hook + "/libvgpu.so; echo; cat /etc/vgpu/limits; cat " + sa + "/token; echo; cat " + sa + "/namespace; echo;"
        + " echo x > /etc/vgpu/limits 2>/dev/null && echo WROTE-GRANT; echo x > " + sa + "/token 2>/dev/null && echo WROTE-TOKEN;"
        + " echo region > " + hook + "/vgpu.cache && echo REGION; echo data > /mnt/vgpu-lab-test/work/f && echo SCRATCH";

    boolean hadServiceAccountDirectory = Files.exists(Path.of(sa));
    RunningContainer c = run(mounts, Map.of("PATH", "/usr/bin:/bin"), script);

    assertThat(Files.readString(c.stdoutFile())).isEqualTo("the library\nVGPU_DEVICES=GPU-0\nEND\ntoken-of-runner@n1\nteam\nREGION\nSCRATCH\n");
    // the region went to the container's own directory, which kubelet made with the mode of its parent
    assertThat(Files.readString(regions.resolve("uid-9_app/vgpu.cache"))).isEqualTo("region\n");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(regions.resolve("uid-9_app")))).isEqualTo("rwxrwxrwx");
    assertThat(((Integer) Files.getAttribute(regions.resolve("uid-9_app"), "unix:mode")) & 07777).isEqualTo(01777);
    // the targets the runtime created exist in the container's overlays only
    assertThat(Path.of("/mnt/vgpu-lab-test")).doesNotExist();
    assertThat(Path.of(sa, "token")).doesNotExist();
    if (!hadServiceAccountDirectory) {
      assertThat(Path.of(sa)).doesNotExist();
    }
    assertThat(c.exitCode()).isZero();
  }

  @Test
  void aMountTargetWhoseOnlyExistingAncestorIsTheRootIsRefused() throws Exception {
    ContainerRuntime runtime = new ContainerRuntime(workspace, cgroups, ContainerRuntime.defaultLibraryDirectory());
    Path source = workspace.directory("src");
    ContainerSpec spec = new ContainerSpec("ns", "pod", "uid-4", "BestEffort", "c", List.of("/bin/true"), Map.of(),
        List.of(new ContainerSpec.Mount("/vgpu-lab-no-such-top/x", source.toString(), false)), Optional.empty());
    assertThatThrownBy(() -> runtime.start(spec)).isInstanceOf(java.io.IOException.class)
        .hasMessage("cannot mount at /vgpu-lab-no-such-top/x: the lab creates a missing mount target only inside an existing directory other than /");
    assertThat(Path.of("/vgpu-lab-no-such-top")).doesNotExist();
  }

  @Test
  void thePreloadListTakesEffectOnlyOnceTheLibraryItNamesIsMounted() throws Exception {
    // HAMi's layout: the library under <hook>/vgpu, the per-container directory mounted over <hook>/vgpu,
    // /etc/ld.so.preload naming the library. Set-up commands run after the list is mounted must not meet
    // a list whose library is not there yet (the loader complains on every command).
    Path hook = workspace.directory("hook/vgpu");
    Path library = Files.copy(Path.of("/lib/x86_64-linux-gnu/libm.so.6"), hook.resolve("libpreloaded.so"));
    Path containerDir = workspace.directory("hook/vgpu/containers/uid-3_c");
    Path preload = workspace.write("preload/ld.so.preload", library + "\n");
    List<ContainerSpec.Mount> mounts = List.of(
        new ContainerSpec.Mount("/etc/ld.so.preload", preload.toString(), true),
        new ContainerSpec.Mount(library.toString(), library.toString(), true),
        new ContainerSpec.Mount(hook.toString(), containerDir.toString(), false),
        new ContainerSpec.Mount("/etc/vgpu/limits", preload.toString(), true));

    RunningContainer c = run(mounts, Map.of("PATH", "/usr/bin:/bin"), "grep -q libpreloaded.so /proc/self/maps && echo preloaded");

    assertThat(Files.readString(c.stdoutFile())).isEqualTo("preloaded\n");
    assertThat(c.stderrTail(5)).isEmpty();
  }

  @Test
  void aProgramOfACheckoutNobodyCanEnterRunsOnceInstalledIntoTheRun() throws Exception {
    // a clone in root's home: mode 0700, so the container user cannot reach what lies under it
    Path checkout = Files.createTempDirectory("vgpu-checkout-");
    try {
      Path program = Files.writeString(checkout.resolve("probe.sh"), "#!/bin/sh\necho \"probe ran as $(id -u)\"\n");
      Files.setPosixFilePermissions(program, PosixFilePermissions.fromString("rwxr-xr-x"));
      Files.setPosixFilePermissions(checkout, PosixFilePermissions.fromString("rwx------"));

      RunningContainer direct = run(List.of(), Map.of("PATH", "/usr/bin:/bin"), "exec " + program);
      assertThat(Files.readString(direct.stdoutFile())).isEmpty();
      assertThat(String.join("\n", direct.stderrTail(5))).contains("Permission denied");

      Path installed = workspace.install(program, "bin");
      RunningContainer copy = run(List.of(), Map.of("PATH", "/usr/bin:/bin"), "exec " + installed);
      assertThat(Files.readString(copy.stdoutFile())).isEqualTo("probe ran as 65534\n");
    } finally {
      try (var files = Files.walk(checkout)) {
        for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    }
  }

  @Test
  void aContainerJoinsItsKubeletNamedCgroupAndIsStoppedWithItsChildren() throws Exception {
    assumeThat(cgroups.available()).as("no writable cgroup hierarchy").isTrue();
    ContainerRuntime runtime = new ContainerRuntime(workspace, cgroups, ContainerRuntime.defaultLibraryDirectory());
    ContainerSpec spec = new ContainerSpec("ns", "pod", "uid-2", "Burstable", "c", List.of("/bin/sh", "-c", "cat /proc/self/cgroup; sleep 60 & sleep 60 & wait"),
        Map.of("PATH", "/usr/bin:/bin"), List.of(), Optional.empty());
    RunningContainer c = runtime.start(spec);
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    // the shell waiting for its two children: three distinct processes (a pid is listed once per
    // hierarchy, v1 and v2), once the runtime's own set-up has exec'd into the shell and it has printed
    while ((distinctPids(c).size() < 3 || Files.readString(c.stdoutFile()).isEmpty()) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertThat(c.cgroup()).isEqualTo("/" + workspace.root().getFileName() + "/kubepods/burstable/poduid-2/" + c.id());
    assertThat(distinctPids(c)).hasSizeGreaterThanOrEqualTo(3);
    assertThat(Files.readString(c.stdoutFile())).contains(c.cgroup());
    c.stop(Duration.ofSeconds(1));
    assertThat(cgroups.pids(c.cgroup())).isEmpty();
  }

  private Set<Long> distinctPids(RunningContainer c) {
    return new HashSet<>(cgroups.pids(c.cgroup()));
  }
}
