-- Room on each page of outbox_messages for the relay's updates (decision 0038). A message is written
-- once and updated twice: the relay's lease (locked_until, locked_by: no indexed column) and its
-- outcome. With its page full, the lease's new row version goes to another page, and every index of
-- the table takes an entry for it; with room on the page it is a heap-only tuple, which no index
-- sees. Half of each page, so that a lease's version of every row on it fits (at 70, measured, a third
-- of the leases still left their page). Only pages written from now on keep the room. Written here
-- because drizzle-kit's schema cannot hold a table's storage parameters; generated as a custom
-- migration (`drizzle-kit generate --custom`).
ALTER TABLE "outbox_messages" SET (fillfactor = 50);
