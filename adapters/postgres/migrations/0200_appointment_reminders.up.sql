-- The appointment reminder (issue 27, core/notify/reminder.go).
--
-- A reminder is a notification of an appointment, not of a turn: its row
-- keeps turn_id '' and names the appointment. Its key (the unique column)
-- is the appointment and its slot's start, so a replayed booking stores
-- nothing more. No foreign key to appointments, like turns: a message
-- goes with its queue, and the appointment's lifecycle writes must not
-- take a lock on a row the send job reads.
ALTER TABLE notifications ADD COLUMN appointment_id text;
CREATE INDEX notifications_appointment_idx ON notifications (appointment_id, created_at)
    WHERE appointment_id IS NOT NULL;

-- What an appointment's customer asked for at booking: WhatsApp rather
-- than SMS, and the messages' language (null: the queue's).
ALTER TABLE appointments ADD COLUMN notify_whatsapp boolean NOT NULL DEFAULT false;
ALTER TABLE appointments ADD COLUMN language text;
