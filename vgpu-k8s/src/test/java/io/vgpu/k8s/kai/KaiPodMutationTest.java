package io.vgpu.k8s.kai;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.k8s.admission.AdmissionResult;
import io.vgpu.k8s.pod.PodJson;
import io.vgpu.nvidia.HookLayout;
import org.junit.jupiter.api.Test;

/** Golden JSON patches of vgpu's webhook for the pods KAI Scheduler shares. */
class KaiPodMutationTest {
  private final KaiPodMutation mutation = new KaiPodMutation(new HookLayout("/usr/local"));

  private static Pod pod(String json) {
    return PodJson.fromTree(PodJson.mapper().readTree(json.replace('\'', '"')));
  }

  private AdmissionResult admit(String json) {
    return mutation.admit(pod(json));
  }

  /** The four volumes, as the patch adds them to a pod with none. */
  private static final String VOLUMES =
      "[{\"name\":\"vgpu-kai-library\",\"hostPath\":{\"path\":\"/usr/local/vgpu/libvgpu.so\",\"type\":\"File\"}},"
          + "{\"name\":\"vgpu-kai-preload\",\"hostPath\":{\"path\":\"/usr/local/vgpu/ld.so.preload\",\"type\":\"File\"}},"
          + "{\"name\":\"vgpu-kai-grant\",\"hostPath\":{\"path\":\"/usr/local/vgpu/kai\",\"type\":\"Directory\"}},"
          + "{\"name\":\"vgpu-kai-region\",\"hostPath\":{\"path\":\"/usr/local/vgpu/containers\",\"type\":\"Directory\"}}]";

  private static String mounts(String container) {
    return "[{\"mountPath\":\"/usr/local/vgpu/libvgpu.so\",\"name\":\"vgpu-kai-library\",\"readOnly\":true},"
        + "{\"mountPath\":\"/etc/ld.so.preload\",\"name\":\"vgpu-kai-preload\",\"readOnly\":true},"
        + "{\"mountPath\":\"/etc/vgpu\",\"name\":\"vgpu-kai-grant\",\"readOnly\":true,\"subPathExpr\":\"$(VGPU_POD_UID)_" + container + "\"},"
        + "{\"mountPath\":\"/usr/local/vgpu\",\"name\":\"vgpu-kai-region\",\"subPathExpr\":\"$(VGPU_POD_UID)_" + container + "\"}]";
  }

  private static final String ENV = "{\"name\":\"VGPU_POD_UID\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.uid\"}}}";

  @Test
  void aGpuMemoryPodGetsTheEnvTheVolumesAndTheMountsOnItsFirstContainer() {
    AdmissionResult r = admit("{'metadata':{'name':'p','namespace':'team-a','annotations':{'gpu-memory':'20480'}},"
        + "'spec':{'schedulerName':'kai-scheduler','containers':[{'name':'main','image':'cuda'}]}}");
    assertThat(r.allowed()).isTrue();
    assertThat(r.patch().toString()).isEqualTo(
        "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env\",\"value\":[" + ENV + "]},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts\",\"value\":" + mounts("main") + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/volumes\",\"value\":" + VOLUMES + "}]");
  }

  @Test
  void aGpuFractionPodGetsItOnTheInitContainerTheAnnotationNames() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.5','gpu-fraction-container-name':'prep'}},"
        + "'spec':{'initContainers':[{'name':'other','image':'x'},{'name':'prep','image':'x'}],'containers':[{'name':'prep-not-this','image':'y'},{'name':'prep','image':'y'}],"
        + "'volumes':[{'name':'data','emptyDir':{}}]}}");
    assertThat(r.allowed()).isTrue();
    String volumes = VOLUMES.substring(1, VOLUMES.length() - 1);
    String[] each = volumes.split("(?<=}}),");
    assertThat(r.patch().toString()).isEqualTo(
        "[{\"op\":\"add\",\"path\":\"/spec/initContainers/1/env\",\"value\":[" + ENV + "]},"
            + "{\"op\":\"add\",\"path\":\"/spec/initContainers/1/volumeMounts\",\"value\":" + mounts("prep") + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/volumes/1\",\"value\":" + each[0] + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/volumes/2\",\"value\":" + each[1] + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/volumes/3\",\"value\":" + each[2] + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/volumes/4\",\"value\":" + each[3] + "}]");
  }

  @Test
  void aMultiContainerPodWithoutTheAnnotationGetsItOnItsFirstContainerAfterItsOwnEnvAndMounts() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-memory':'8000'}},"
        + "'spec':{'containers':[{'name':'trainer','image':'x','env':[{'name':'A','value':'1'}],'volumeMounts':[{'name':'data','mountPath':'/data'}]},"
        + "{'name':'sidecar','image':'y'}],'volumes':[{'name':'data','emptyDir':{}}]}}");
    String m = mounts("trainer");
    String[] each = m.substring(1, m.length() - 1).split("(?<=}),(?=\\{)");
    assertThat(each).hasSize(4);
    assertThat(r.patch().toString()).startsWith(
        "[{\"op\":\"add\",\"path\":\"/spec/containers/0/env/1\",\"value\":" + ENV + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts/1\",\"value\":" + each[0] + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts/2\",\"value\":" + each[1] + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts/3\",\"value\":" + each[2] + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts/4\",\"value\":" + each[3] + "},"
            + "{\"op\":\"add\",\"path\":\"/spec/volumes/1\",");
    assertThat(r.patch().toString()).doesNotContain("/spec/containers/1");
  }

  @Test
  void aPodAlreadyMutatedGetsAnEmptyPatchWhenTheApiServerReinvokesTheWebhook() {
    AdmissionResult first = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.25'}},'spec':{'containers':[{'name':'main','image':'x'}]}}");
    AdmissionResult again = mutation.admit(first.admittedPod());
    assertThat(again.allowed()).isTrue();
    assertThat(again.patch().toString()).isEqualTo("[]");
    // Another webhook (KAI's) appended env after vgpu's entry between the two calls: still nothing to do.
    Pod changed = first.admittedPod();
    changed.getSpec().getContainers().get(0).getEnv().add(new io.fabric8.kubernetes.api.model.EnvVar("NVIDIA_VISIBLE_DEVICES", "x", null));
    assertThat(mutation.admit(changed).patch().toString()).isEqualTo("[]");
  }

  @Test
  void aTenantsOwnVgpuPodUidIsReplacedByTheOneFromThePodsUid() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-memory':'1024'}},"
        + "'spec':{'containers':[{'name':'main','image':'x','env':[{'name':'VGPU_POD_UID','value':'victim-uid'},{'name':'B','value':'2'},"
        + "{'name':'VGPU_POD_UID','valueFrom':{'fieldRef':{'fieldPath':'metadata.name'}}}]}]}}");
    assertThat(r.allowed()).isTrue();
    assertThat(r.patch().toString()).startsWith(
        "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/env/0/name\",\"value\":\"B\"},"
            + "{\"op\":\"replace\",\"path\":\"/spec/containers/0/env/0/value\",\"value\":\"2\"},"
            + "{\"op\":\"replace\",\"path\":\"/spec/containers/0/env/1/name\",\"value\":\"VGPU_POD_UID\"},"
            + "{\"op\":\"remove\",\"path\":\"/spec/containers/0/env/1/value\"},"
            + "{\"op\":\"add\",\"path\":\"/spec/containers/0/env/1/valueFrom\",\"value\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.uid\"}}},"
            + "{\"op\":\"remove\",\"path\":\"/spec/containers/0/env/2\"},");
    assertThat(r.admittedPod().getSpec().getContainers().get(0).getEnv())
        .extracting(e -> e.getName())
        .containsExactly("B", "VGPU_POD_UID");
  }

  @Test
  void aMalformedFractionIsKaisToRejectAndStillGetsTheIsolation() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'lots'}},'spec':{'containers':[{'name':'main','image':'x'}]}}");
    assertThat(r.allowed()).isTrue();
    assertThat(r.patch().toString()).contains("\"subPathExpr\":\"$(VGPU_POD_UID)_main\"");
  }

  @Test
  void aContainerNameThatMatchesNothingIsDenied() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-fraction':'0.5','gpu-fraction-container-name':'gone'}},'spec':{'containers':[{'name':'main','image':'x'}]}}");
    assertThat(r.allowed()).isFalse();
    assertThat(r.message()).isEqualTo("pod annotation gpu-fraction-container-name: 'gone' names no init container or container of the pod");
  }

  @Test
  void collisionsWithVgpusNamesOrPathsAreDeniedNamingContainerFieldAndValue() {
    String shared = "{'metadata':{'name':'p','annotations':{'gpu-memory':'1024'}},'spec':";
    assertThat(admit(shared + "{'containers':[{'name':'main','image':'x'}],'volumes':[{'name':'vgpu-kai-grant','emptyDir':{}}]}}").message())
        .isEqualTo("spec.volumes name vgpu-kai-grant: the name is vgpu's, and this volume is not vgpu's");
    assertThat(admit(shared + "{'containers':[{'name':'main','image':'x','volumeMounts':[{'name':'mine','mountPath':'/etc//vgpu/limits'}]}],"
        + "'volumes':[{'name':'mine','configMap':{'name':'fake-limits'}}]}}").message())
        .isEqualTo("container main: volumeMounts mountPath /etc//vgpu/limits is vgpu's (/etc/vgpu)");
    assertThat(admit(shared + "{'containers':[{'name':'main','image':'x','volumeMounts':[{'name':'mine','mountPath':'/etc/ld.so.preload'}]}],"
        + "'volumes':[{'name':'mine','emptyDir':{}}]}}").message())
        .isEqualTo("container main: volumeMounts mountPath /etc/ld.so.preload is vgpu's (/etc/ld.so.preload)");
    assertThat(admit(shared + "{'containers':[{'name':'main','image':'x','volumeMounts':[{'name':'mine','mountPath':'/usr/local/vgpu'}]}],"
        + "'volumes':[{'name':'mine','emptyDir':{}}]}}").message())
        .isEqualTo("container main: volumeMounts mountPath /usr/local/vgpu is vgpu's (/usr/local/vgpu)");
    // Another container mounting vgpu's grant volume (added only by the webhook) would see every container's grant.
    assertThat(admit(shared + "{'containers':[{'name':'main','image':'x'},{'name':'peek','image':'x','volumeMounts':[{'name':'vgpu-kai-grant','mountPath':'/all'}]}]}}").message())
        .isEqualTo("container peek: volumeMounts name vgpu-kai-grant is vgpu's volume, mounted only by vgpu on the fraction container");
    // The same path in a container that is not the fraction container is that container's business.
    assertThat(admit(shared + "{'containers':[{'name':'main','image':'x'},{'name':'side','image':'x','volumeMounts':[{'name':'mine','mountPath':'/etc/vgpu'}]}],"
        + "'volumes':[{'name':'mine','emptyDir':{}}]}}").allowed()).isTrue();
  }

  @Test
  void aPrivilegedContainerOfASharedPodIsDenied() {
    AdmissionResult r = admit("{'metadata':{'name':'p','annotations':{'gpu-memory':'1024'}},'spec':{'containers':[{'name':'main','image':'x','securityContext':{'privileged':true}}]}}");
    assertThat(r.allowed()).isFalse();
    assertThat(r.message()).isEqualTo("container main: securityContext.privileged is true: a privileged container of a pod KAI shares could unmount vgpu's limits");
  }

  @Test
  void wholeCardAndReservationPodsAreLeftAsTheyAreWhateverNodeOrPrivilegeTheyHave() {
    AdmissionResult whole = admit("{'metadata':{'name':'w'},'spec':{'nodeName':'n1','containers':[{'name':'main','image':'x','securityContext':{'privileged':true},"
        + "'resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}");
    assertThat(whole.allowed()).isTrue();
    assertThat(whole.patch().toString()).isEqualTo("[]");
    AdmissionResult reservation = admit("{'metadata':{'name':'gpu-reservation-0123456789abcdef','namespace':'kai-resource-reservation','labels':{'runai-gpu-group':'g'}},"
        + "'spec':{'nodeName':'n1','containers':[{'name':'resource-reservation','image':'x','resources':{'limits':{'nvidia.com/gpu':'1'}}}]}}");
    assertThat(reservation.allowed()).isTrue();
    assertThat(reservation.patch().toString()).isEqualTo("[]");
  }

  @Test
  void theHookPathComesFromTheLayout() {
    AdmissionResult r = new KaiPodMutation(new HookLayout("/opt/hook")).admit(pod("{'metadata':{'name':'p','annotations':{'gpu-memory':'1'}},'spec':{'containers':[{'name':'c','image':'x'}]}}"));
    assertThat(r.patch().toString())
        .contains("{\"name\":\"vgpu-kai-library\",\"hostPath\":{\"path\":\"/opt/hook/vgpu/libvgpu.so\",\"type\":\"File\"}}")
        .contains("{\"mountPath\":\"/opt/hook/vgpu\",\"name\":\"vgpu-kai-region\",\"subPathExpr\":\"$(VGPU_POD_UID)_c\"}")
        .contains("\"path\":\"/opt/hook/vgpu/kai\",\"type\":\"Directory\"");
  }
}
