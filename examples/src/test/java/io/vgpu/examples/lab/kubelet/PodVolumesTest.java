package io.vgpu.examples.lab.kubelet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.pod.PodJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Pod volumes and mounts on the lab's kubelet: node paths relocated into the run, hostPath types,
 * ConfigMap files and modes, the ServiceAccount volume, subPath and subPathExpr (created with the
 * volume root's mode, as kubelet's SafeMakeDir does), and the refusals.
 */
class PodVolumesTest {
  @TempDir
  Path run;

  private static final ContainerEnvironment.PodPlace PLACE = new ContainerEnvironment.PodPlace("worker1", "127.0.0.1", "127.0.0.1");

  private PodVolumes volumes() {
    NodePaths paths = new NodePaths(run.resolve("root"), Map.of("/usr/local/vgpu", run.resolve("hook/vgpu")));
    ClusterAccess access = new ClusterAccess("127.0.0.1", 6443, "", (ns, sa, node) -> "token-of-" + ns + ":" + sa + "@" + node);
    ContainerEnvironment.ConfigMaps configMaps = (ns, name) -> name.equals("caps") ? Optional.of(Map.of("a", "1", "b", "2")) : Optional.empty();
    return new PodVolumes(run.resolve("pods/u-1"), paths, configMaps, access, PLACE);
  }

  private static Pod pod(String spec) {
    return PodJson.mapper().readValue("""
        {"metadata": {"name": "p1", "namespace": "tenants", "uid": "u-1"}, "spec": %s}
        """.formatted(spec), Pod.class);
  }

  @Test
  void nodePathsLieInTheRunAndTheHookIsRelocatedInContainersToo() {
    NodePaths paths = new NodePaths(run.resolve("root"), Map.of("/usr/local/vgpu", run.resolve("hook/vgpu")));
    assertThat(paths.onNode("/var/log/../log/x")).isEqualTo(run.resolve("root/var/log/x"));
    assertThat(paths.onNode("/../../etc")).isEqualTo(run.resolve("root/etc"));
    assertThat(paths.onNode("/usr/local/vgpu/kai")).isEqualTo(run.resolve("hook/vgpu/kai"));
    assertThat(paths.onNode("/usr/local/vgpuX")).isEqualTo(run.resolve("root/usr/local/vgpuX"));
    assertThat(paths.inContainer("/usr/local/vgpu")).isEqualTo(run.resolve("hook/vgpu").toString());
    assertThat(paths.inContainer("/etc/vgpu")).isEqualTo("/etc/vgpu");
    assertThatThrownBy(() -> paths.onNode("relative")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void kaiStyleMountsResolveThroughSubPathExprWithTheVolumeRootsMode() throws Exception {
    Path kai = Files.createDirectories(run.resolve("hook/vgpu/kai"));
    Path containers = Files.createDirectories(run.resolve("hook/vgpu/containers"));
    Files.setPosixFilePermissions(kai, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.setPosixFilePermissions(containers, PosixFilePermissions.fromString("rwx--x--x"));
    Files.writeString(run.resolve("hook/vgpu/libvgpu.so"), "lib");
    Pod pod = pod("""
        {"containers": [{"name": "app", "volumeMounts": [
           {"name": "lib", "mountPath": "/usr/local/vgpu/libvgpu.so", "readOnly": true},
           {"name": "grant", "mountPath": "/etc/vgpu", "readOnly": true, "subPathExpr": "$(VGPU_POD_UID)_app"},
           {"name": "region", "mountPath": "/usr/local/vgpu", "subPathExpr": "$(VGPU_POD_UID)_app"}]}],
         "volumes": [{"name": "lib", "hostPath": {"path": "/usr/local/vgpu/libvgpu.so", "type": "File"}},
                     {"name": "grant", "hostPath": {"path": "/usr/local/vgpu/kai", "type": "Directory"}},
                     {"name": "region", "hostPath": {"path": "/usr/local/vgpu/containers", "type": "Directory"}}]}
        """);
    PodVolumes volumes = volumes();
    Map<String, PodVolumes.Mounted> set = volumes.setUp(pod);
    List<ContainerSpec.Mount> mounts = volumes.mounts(pod, pod.getSpec().getContainers().get(0), Map.of("VGPU_POD_UID", "u-1"), set);
    String hook = run.resolve("hook/vgpu").toString();
    assertThat(mounts).containsExactly(
        new ContainerSpec.Mount(hook + "/libvgpu.so", hook + "/libvgpu.so", true),
        new ContainerSpec.Mount("/etc/vgpu", hook + "/kai/u-1_app", true),
        new ContainerSpec.Mount(hook, hook + "/containers/u-1_app", false),
        new ContainerSpec.Mount(PodVolumes.SERVICE_ACCOUNT_MOUNT, run.resolve("pods/u-1/volumes/kubernetes.io~projected/kube-api-access-lab").toString(), true));
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(run.resolve("hook/vgpu/kai/u-1_app")))).isEqualTo("rwxr-xr-x");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(run.resolve("hook/vgpu/containers/u-1_app")))).isEqualTo("rwx--x--x");
  }

  @Test
  void theServiceAccountVolumeHoldsABoundTokenTheCaAndTheNamespace() throws Exception {
    Pod pod = pod("""
        {"serviceAccountName": "runner", "containers": [{"name": "app"}]}
        """);
    Path dir = volumes().setUp(pod).get("kube-api-access-lab").path();
    assertThat(Files.readString(dir.resolve("token"))).isEqualTo("token-of-tenants:runner@worker1");
    assertThat(Files.readString(dir.resolve("namespace"))).isEqualTo("tenants");
    assertThat(Files.readString(dir.resolve("ca.crt"))).isEmpty();
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("token")))).isEqualTo("rw-r--r--");
    Pod optedOut = pod("""
        {"automountServiceAccountToken": false, "containers": [{"name": "app"}]}
        """);
    assertThat(volumes().setUp(optedOut)).isEmpty();
  }

  @Test
  void configMapVolumesWriteTheirItemsWithTheirModes() throws Exception {
    Pod pod = pod("""
        {"automountServiceAccountToken": false, "containers": [{"name": "app"}],
         "volumes": [{"name": "all", "configMap": {"name": "caps", "defaultMode": 256}},
                     {"name": "some", "configMap": {"name": "caps", "items": [{"key": "b", "path": "sub/b.txt", "mode": 420}]}}]}
        """);
    Map<String, PodVolumes.Mounted> set = volumes().setUp(pod);
    assertThat(set.get("all").readOnly()).isTrue();
    assertThat(Files.readString(set.get("all").path().resolve("a"))).isEqualTo("1");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(set.get("all").path().resolve("a")))).isEqualTo("r--------");
    assertThat(Files.readString(set.get("some").path().resolve("sub/b.txt"))).isEqualTo("2");
    assertThat(Files.exists(set.get("some").path().resolve("a"))).isFalse();
  }

  @Test
  void hostPathTypesAreCheckedOrCreatedAsKubeletDoes() throws Exception {
    Pod create = pod("""
        {"automountServiceAccountToken": false, "containers": [{"name": "app"}],
         "volumes": [{"name": "d", "hostPath": {"path": "/var/lib/x", "type": "DirectoryOrCreate"}},
                     {"name": "f", "hostPath": {"path": "/var/lib/y/file", "type": "FileOrCreate"}}]}
        """);
    volumes().setUp(create);
    assertThat(run.resolve("root/var/lib/x")).isDirectory();
    assertThat(run.resolve("root/var/lib/y/file")).isRegularFile();
    assertThatThrownBy(() -> volumes().setUp(pod("""
        {"automountServiceAccountToken": false, "containers": [{"name": "app"}], "volumes": [{"name": "d", "hostPath": {"path": "/opt/none", "type": "Directory"}}]}
        """))).isInstanceOf(VolumeSetupException.class)
        .hasMessage("MountVolume.SetUp failed for volume \"d\" : hostPath type check failed: /opt/none is not a directory");
    assertThatThrownBy(() -> volumes().setUp(pod("""
        {"automountServiceAccountToken": false, "containers": [{"name": "app"}], "volumes": [{"name": "f", "hostPath": {"path": "/var/lib/x", "type": "File"}}]}
        """))).isInstanceOf(VolumeSetupException.class)
        .hasMessage("MountVolume.SetUp failed for volume \"f\" : hostPath type check failed: /var/lib/x is not a file");
    assertThatThrownBy(() -> volumes().setUp(pod("""
        {"automountServiceAccountToken": false, "containers": [{"name": "app"}], "volumes": [{"name": "c", "configMap": {"name": "gone"}}]}
        """))).isInstanceOf(VolumeSetupException.class)
        .hasMessage("MountVolume.SetUp failed for volume \"c\" : configmap \"gone\" not found");
  }

  @Test
  void subPathsThatLeaveTheVolumeOrNameUnsetVariablesAreRefused() throws Exception {
    Path root = Files.createDirectories(run.resolve("vol"));
    assertThatThrownBy(() -> PodVolumes.subPathSource("v", "app", root, "../x")).isInstanceOf(ContainerConfigException.class)
        .hasMessage("unable to provision SubPath `../x`: must not contain '..'");
    assertThatThrownBy(() -> PodVolumes.subPathSource("v", "app", root, "/abs")).isInstanceOf(ContainerConfigException.class)
        .hasMessage("error SubPath `/abs` must not be an absolute path");
    Files.createSymbolicLink(root.resolve("out"), run);
    assertThatThrownBy(() -> PodVolumes.subPathSource("v", "app", root, "out/x")).isInstanceOf(ContainerConfigException.class)
        .hasMessage("failed to create subPath directory for volumeMount \"v\" of container \"app\"");
    assertThatThrownBy(() -> PodVolumes.subPathOf("$(A)_$(B)_$(C)", Map.of("A", "1", "B", ""))).isInstanceOf(ContainerConfigException.class)
        .hasMessage("missing value for B, C");
    assertThat(PodVolumes.subPathOf("$(A)_x", Map.of("A", "1"))).isEqualTo("1_x");
  }
}
