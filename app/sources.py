"""Public citations as links: a beat's `Source:` line and a Q&A answer's sources.

Learners only ever see public sources (Kafka source files with line ranges, KIPs, JIRA issues,
the Kafka documentation, papers). `link_citations(text)` cuts a citation line into segments
`{"text", "url"}`; a segment gets a URL when there is one to give:

    KIP-101                        the KIP's page on the Apache wiki (the page title is part of
                                   its address, so only KIPs listed in KIP_PAGES link there;
                                   any other KIP links to the wiki's list of KIPs)
    KAFKA-6361                     the issue in Apache JIRA
    Partition.scala 1149-1222      the file in apache/kafka at the commit the engine cites
                                   (engine.steps.KAFKA_SOURCE_BASE_URL), at those lines; each
                                   further range after it ("and 1463-1472") links on its own
    0.10.2.2 Partition.scala 104   the same file at that release tag instead
    https://...                    itself
    Kafka documentation: Persistence   a named page or paper in DOC_LINKS
    apache/kafka PR #9533          a GitHub pull request or issue

Everything else stays plain text. Unknown file names stay plain text too: a link that points at
the wrong file would be worse than none.
"""

from __future__ import annotations

import re
from typing import Any

from engine.steps import KAFKA_SOURCE_BASE_URL

KIP_INDEX_URL = "https://cwiki.apache.org/confluence/display/KAFKA/Kafka+Improvement+Proposals"
_CWIKI = "https://cwiki.apache.org/confluence/display/KAFKA/"
KIP_PAGES: dict[int, str] = {
    1: "KIP-1+-+Remove+support+of+request.required.acks",
    101: "KIP-101+-+Alter+Replication+Protocol+to+use+Leader+Epoch+rather+than+High+Watermark+for+Truncation",
    106: "KIP-106+-+Change+Default+unclean.leader.election.enabled+from+True+to+False",
    211: "KIP-211%3A+Revise+Expiration+Semantics+of+Consumer+Group+Offsets",
    250: "KIP-250+Add+Support+for+Quorum-based+Producer+Acknowledgment",
    279: "KIP-279%3A+Fix+log+divergence+between+leader+and+follower+after+fast+leader+fail+over",
    480: "KIP-480%3A+Sticky+Partitioner",
    320: "KIP-320%3A+Allow+fetchers+to+detect+and+handle+log+truncation",
    392: "KIP-392%3A+Allow+consumers+to+fetch+from+closest+replica",
    500: "KIP-500%3A+Replace+ZooKeeper+with+a+Self-Managed+Metadata+Quorum",
    579: "KIP-579%3A+new+exception+on+min.insync.replicas+%3E+replication.factor",
    595: "KIP-595%3A+A+Raft+Protocol+for+the+Metadata+Quorum",
    630: "KIP-630%3A+Kafka+Raft+Snapshot",
    631: "KIP-631%3A+The+Quorum-based+Kafka+Controller",
    794: "KIP-794%3A+Strictly+Uniform+Sticky+Partitioner",
    926: "KIP-926%3A+introducing+acks%3Dmin.insync.replicas+config",
    966: "KIP-966%3A+Eligible+Leader+Replicas",
    1030: "KIP-1030%3A+Change+constraints+and+default+values+for+various+configurations",
    # scene 08
    98: "KIP-98+-+Exactly+Once+Delivery+and+Transactional+Messaging",
    360: "KIP-360%3A+Improve+reliability+of+idempotent%2Ftransactional+producer",
    447: "KIP-447%3A+Producer+scalability+for+exactly+once+semantics",
    890: "KIP-890%3A+Transactions+Server-Side+Defense",
}
JIRA_URL = "https://issues.apache.org/jira/browse/"
_DOCS = "https://kafka.apache.org/documentation/"
# Named public documents the course cites, spelled exactly like this in citations.
DOC_LINKS: dict[str, str] = {
    "Kafka documentation: Replicated Logs": _DOCS + "#design_replicatedlog",
    "Kafka documentation: Main Concepts and Terminology": _DOCS + "#intro_concepts_and_terms",
    "Kafka documentation: Consumer Position": _DOCS + "#design_consumerposition",
    "Kafka documentation: Log Compaction": _DOCS + "#compaction",
    "Kafka documentation: consumer configs": _DOCS + "#consumerconfigs",
    "Kafka documentation: Persistence": _DOCS + "#design_filesystem",
    "Kafka documentation: producer configs": _DOCS + "#producerconfigs",
    "Kafka documentation: topic configs": _DOCS + "#topicconfigs",
    "Kafka documentation: broker configs": _DOCS + "#brokerconfigs",
    "Kafka documentation: upgrade notes": _DOCS + "#upgrade",
    "Kafka documentation: rack awareness": _DOCS + "#basic_ops_racks",
    "Kafka documentation: Eligible Leader Replicas": "https://kafka.apache.org/41/operations/eligible-leader-replicas",
    "Schroeder and Gibson, FAST 2007": "https://www.usenix.org/legacy/event/fast07/tech/schroeder/schroeder_html/index.html",
    "Ford et al., OSDI 2010": "https://www.usenix.org/legacy/event/osdi10/tech/full_papers/Ford.pdf",
    "Cidon et al., Copysets, USENIX ATC 2013": "https://www.usenix.org/conference/atc13/technical-sessions/presentation/cidon",
    "Backblaze Drive Stats": "https://www.backblaze.com/blog/category/cloud-storage/hard-drive-stats/",
    "Clopper and Pearson, Biometrika 1934": "https://doi.org/10.1093/biomet/26.4.404",
    "Allegro Tech blog: Kafka performance analysis (2024)": "https://blog.allegro.tech/2024/03/kafka-performance-analysis.html",
}
# "owner/repo PR #n" or "owner/repo issue #n"; a bare "librdkafka" means confluentinc's
GITHUB_ALIASES = {"librdkafka": "confluentinc/librdkafka"}

# Kafka source files the course cites; a citation names them by file name alone.
_SOURCE_PATHS = (
    "core/src/main/scala/kafka/cluster/Partition.scala",
    "core/src/main/scala/kafka/cluster/Replica.scala",
    "core/src/main/scala/kafka/server/ReplicaManager.scala",
    "core/src/main/scala/kafka/server/DelayedFetch.scala",
    "core/src/main/scala/kafka/server/DelayedProduce.scala",
    "core/src/main/scala/kafka/server/KafkaApis.scala",
    "core/src/main/scala/kafka/server/KafkaConfig.scala",
    "core/src/main/scala/kafka/server/ReplicaFetcherThread.scala",
    "core/src/main/scala/kafka/server/AbstractFetcherThread.scala",
    "core/src/main/scala/kafka/log/UnifiedLog.scala",
    "core/src/main/scala/kafka/log/LogManager.scala",
    "storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java",
    "metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java",
    "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java",
    "metadata/src/main/java/org/apache/kafka/controller/ClusterControlManager.java",
    "metadata/src/main/java/org/apache/kafka/controller/QuorumController.java",
    "metadata/src/main/java/org/apache/kafka/controller/BrokerHeartbeatManager.java",
    "metadata/src/main/java/org/apache/kafka/metadata/PartitionRegistration.java",
    "metadata/src/main/java/org/apache/kafka/metadata/placement/StripedReplicaPlacer.java",
    "server/src/main/java/org/apache/kafka/server/config/KRaftConfigs.java",
    "clients/src/main/java/org/apache/kafka/common/config/TopicConfig.java",
    "clients/src/main/java/org/apache/kafka/clients/producer/ProducerConfig.java",
    "clients/src/main/java/org/apache/kafka/clients/producer/internals/Sender.java",
    # the clients and the group coordinator (scenes 01-02)
    "clients/src/main/java/org/apache/kafka/clients/producer/KafkaProducer.java",
    "clients/src/main/java/org/apache/kafka/clients/producer/internals/BuiltInPartitioner.java",
    "clients/src/main/java/org/apache/kafka/common/utils/Utils.java",
    "clients/src/main/java/org/apache/kafka/clients/consumer/KafkaConsumer.java",
    "clients/src/main/java/org/apache/kafka/clients/consumer/ConsumerConfig.java",
    "clients/src/main/java/org/apache/kafka/clients/consumer/internals/ConsumerCoordinator.java",
    "clients/src/main/java/org/apache/kafka/clients/consumer/internals/AbstractCoordinator.java",
    "clients/src/main/java/org/apache/kafka/clients/consumer/internals/SubscriptionState.java",
    "clients/src/main/java/org/apache/kafka/clients/consumer/internals/FetchCollector.java",
    "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/OffsetMetadataManager.java",
    "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java",
    "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorService.java",
    "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorConfig.java",
    "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/classic/ClassicGroup.java",
    "core/src/main/scala/kafka/log/LocalLog.scala",
    "storage/src/main/java/org/apache/kafka/storage/internals/log/LogConfig.java",
    "server-common/src/main/java/org/apache/kafka/server/config/ServerLogConfigs.java",
    # segments, retention and the producer's metadata (scenes 02a, 03)
    "storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java",
    "clients/src/main/java/org/apache/kafka/clients/Metadata.java",
    "clients/src/main/java/org/apache/kafka/clients/producer/internals/RecordAccumulator.java",
    # log compaction (scene 05a)
    "core/src/main/scala/kafka/log/LogCleaner.scala",
    "core/src/main/scala/kafka/log/LogCleanerManager.scala",
    "clients/src/main/java/org/apache/kafka/common/record/MemoryRecords.java",
    "storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java",
    # idempotence and transactions (scene 08)
    "storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerAppendInfo.java",
    "storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerStateEntry.java",
    "storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerStateManager.java",
    "clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java",
    "core/src/main/scala/kafka/coordinator/transaction/TransactionCoordinator.scala",
    "core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala",
)
SOURCE_FILES: dict[str, str] = {path.rsplit("/", 1)[1]: path for path in _SOURCE_PATHS}

_RANGE = r"\d+(?:-\d+)?(?![\w-]|\.\w)"
_TOKEN_RE = re.compile(
    r"(?P<url>https?://[^\s;,()]+)"
    r"|(?P<doc>" + "|".join(re.escape(k) for k in sorted(DOC_LINKS, key=len, reverse=True)) + ")"
    r"|(?P<gh>(?P<repo>\b[\w.-]+/[\w.-]+|\blibrdkafka) (?P<ghkind>PR|issue) #(?P<ghn>\d+))"
    r"|(?P<kip>\bKIP-(?P<kipn>\d+))"
    r"|(?P<jira>\bKAFKA-\d+)"
    rf"|(?P<src>(?:(?P<tag>\b\d+\.\d+(?:\.\d+)*) )?(?P<file>\b[A-Z]\w+\.(?:scala|java))"
    rf"(?: (?P<first>{_RANGE}))?)"
    rf"(?P<more>(?:(?:, | and ){_RANGE})*)"
)
_MORE_RE = re.compile(rf"(, | and )({_RANGE})")


def kip_url(number: int) -> str:
    page = KIP_PAGES.get(number)
    return _CWIKI + page if page else KIP_INDEX_URL


def jira_url(issue: str) -> str:
    return JIRA_URL + issue


def source_url(file_name: str, lines: str = "", tag: str | None = None) -> str | None:
    path = SOURCE_FILES.get(file_name)
    if path is None:
        return None
    base = f"https://github.com/apache/kafka/blob/{tag}/" if tag else KAFKA_SOURCE_BASE_URL
    if not lines:
        return base + path
    first, _, last = lines.partition("-")
    return f"{base}{path}#L{first}" + (f"-L{last}" if last else "")


def citation_url(text: str) -> str | None:
    """The URL of a single citation ("KIP-101", "Partition.scala 1149-1222", a paper, a URL): the
    first link found in it, or None when it names nothing linkable."""
    return next((seg["url"] for seg in link_citations(text.strip()) if seg["url"]), None)


def link_citations(text: str) -> list[dict[str, Any]]:
    """Cut a citation line into {"text", "url"} segments; url is None for plain text."""
    out: list[dict[str, Any]] = []
    pos = 0

    def plain(chunk: str) -> None:
        if not chunk:
            return
        if out and out[-1]["url"] is None:
            out[-1]["text"] += chunk
        else:
            out.append({"text": chunk, "url": None})

    for m in _TOKEN_RE.finditer(text):
        if m["src"] is None and m["more"]:
            # a bare list of ranges with no file before it: leave it as text
            continue
        plain(text[pos : m.start()])
        if m["url"]:
            out.append({"text": m["url"], "url": m["url"]})
        elif m["doc"]:
            out.append({"text": m["doc"], "url": DOC_LINKS[m["doc"]]})
        elif m["gh"]:
            repo = GITHUB_ALIASES.get(m["repo"], m["repo"])
            kind = "pull" if m["ghkind"] == "PR" else "issues"
            out.append({"text": m["gh"], "url": f"https://github.com/{repo}/{kind}/{m['ghn']}"})
        elif m["kip"]:
            out.append({"text": m["kip"], "url": kip_url(int(m["kipn"]))})
        elif m["jira"]:
            out.append({"text": m["jira"], "url": jira_url(m["jira"])})
        else:
            url = source_url(m["file"], m["first"] or "", m["tag"])
            out.append({"text": m["src"], "url": url})
            for sep, lines in _MORE_RE.findall(m["more"] or ""):
                plain(sep)
                out.append({"text": lines, "url": source_url(m["file"], lines, m["tag"])})
        pos = m.end()
    plain(text[pos:])
    return out
