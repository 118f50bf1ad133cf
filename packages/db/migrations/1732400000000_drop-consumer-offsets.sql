-- Up Migration

-- Metering resumes from the offsets it commits to Kafka after each stored chunk; what makes a
-- redelivered event harmless is usage_events' primary key (the event id), not a position kept here.
-- This table was written and never read, so it goes.
DROP TABLE consumer_offsets;

-- Down Migration

CREATE TABLE consumer_offsets (
  consumer_group  text NOT NULL,
  topic           text NOT NULL,
  partition       integer NOT NULL,
  next_offset     bigint NOT NULL,
  PRIMARY KEY (consumer_group, topic, partition)
);
