package io.vgpu.k8s.kai;

import static org.assertj.core.api.Assertions.assertThat;

import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueSpec;
import io.vgpu.core.queue.ResourceTerms;
import io.vgpu.k8s.pod.PodJson;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A Queue as a cluster holds it, read as KAI v0.17 reads it; what KAI cannot mean is 0 and one line. */
class KaiQueueManifestTest {
  private static KaiQueueManifest read(String json) {
    return KaiQueueManifest.read(PodJson.mapper().readTree(json.replace('\'', '"'))).orElseThrow();
  }

  @Test
  void absentFieldsAreZeroThePriorityIsAHundredAndMinusOneMeansAllOrUnlimited() {
    KaiQueueManifest q = read("{'metadata':{'name':'research'},'spec':{'parentQueue':'','resources':{'gpu':{'quota':-1,'limit':2}}}}");
    assertThat(q.problems()).isEmpty();
    QueueSpec spec = q.spec().orElseThrow();
    assertThat(spec.parent()).isEmpty();
    assertThat(spec.priority()).isEqualTo(QueueSpec.DEFAULT_PRIORITY);
    assertThat(spec.terms(QueueResource.GPU)).isEqualTo(new ResourceTerms(-1, 2, 0));
    assertThat(spec.terms(QueueResource.CPU)).isEqualTo(ResourceTerms.NONE);
    KaiQueueManifest bare = read("{'metadata':{'name':'bare'}}");
    assertThat(bare.spec().orElseThrow().terms(QueueResource.MEMORY)).isEqualTo(ResourceTerms.NONE);
    assertThat(read("{'metadata':{'name':'child'},'spec':{'parentQueue':'top','priority':7}}").spec().orElseThrow())
        .isEqualTo(new QueueSpec("child", Optional.of("top"), 7, java.util.Map.of()));
  }

  @Test
  void valuesKaiCannotMeanAreZeroEachWithOneLineAndTheQueueIsKept() {
    KaiQueueManifest q = read("{'metadata':{'name':'odd'},'spec':{'priority':1.5,'resources':{'cpu':{'quota':-3,'limit':'x','overQuotaWeight':-1}}}}");
    assertThat(q.spec().orElseThrow().terms(QueueResource.CPU)).isEqualTo(new ResourceTerms(0, 0, 0));
    assertThat(q.spec().orElseThrow().priority()).isEqualTo(100);
    assertThat(q.problems()).containsExactly(
        "Queue odd: spec.priority 1.5 is not an integer: taken as 100",
        "Queue odd: spec.resources.cpu.quota -3 must be -1 or not below 0: taken as 0 (it deserves nothing)",
        "Queue odd: spec.resources.cpu.limit \"x\" is not a number: taken as 0 (it admits nothing)",
        "Queue odd: spec.resources.cpu.overQuotaWeight -1 must not be negative: taken as 0 (it takes no part in the over-quota division)");
  }

  @Test
  void aQueueThatIsItsOwnParentCannotBeReadAndSaysSo() {
    KaiQueueManifest q = read("{'metadata':{'name':'loop'},'spec':{'parentQueue':'loop'}}");
    assertThat(q.spec()).isEmpty();
    assertThat(q.problems()).containsExactly("Queue loop: spec.parentQueue 'loop' is the queue itself: its pods wait (QueueMissing) until it names another parent or none");
    assertThat(KaiQueueManifest.read(PodJson.mapper().readTree("{\"spec\":{}}"))).isEmpty();
  }
}
